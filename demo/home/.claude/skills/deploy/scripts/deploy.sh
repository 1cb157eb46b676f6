#!/bin/sh
# deploy.sh HOST - rsync the build and restart the service
set -eu
host=${1:?usage: deploy.sh HOST}
rsync -a --delete build/ "deploy@$host.example.com:/srv/webshop/"
ssh "deploy@$host.example.com" systemctl --user restart webshop
