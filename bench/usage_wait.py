#!/usr/bin/env python3
"""/usage/wait latency: a daemon over a scratch home with one Claude session;
`9agents wait /usage/wait` running; five replies appended 2 s apart; the
time from each append to the line it prints. Run after `cargo build
--release` (or with BIN=path): python3 bench/usage_wait.py"""
import os, subprocess, time, json, sys, tempfile, shutil
BIN=os.environ.get("BIN", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target", "release", "9agents"))
root=tempfile.mkdtemp(prefix="9a-w-")
home=os.path.join(root,"home"); run=os.path.join(root,"run"); os.makedirs(run)
sid="bbbbbbbb-0000-4000-8000-000000000001"
proj=os.path.join(home,".claude/projects/-w"); os.makedirs(proj)
def stamp(t): return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(t))
def reply(n,t,i,o): return json.dumps({"type":"assistant","uuid":f"u{n}","timestamp":stamp(t),"cwd":"/w","requestId":f"req_{n}","message":{"id":f"msg_{n}","model":"claude-opus-4-5","role":"assistant","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":i,"output_tokens":o,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}})
path=os.path.join(proj,sid+".jsonl")
open(path,"w").write(reply(1,time.time()-600,1000,10)+"\n")
env=dict(os.environ, HOME=home, XDG_RUNTIME_DIR=run)
sock=os.path.join(root,"s")
d=subprocess.Popen([BIN,"--no-post","--unix",sock,"--root","claude="+os.path.join(home,".claude")],env=env,stderr=subprocess.DEVNULL)
while not os.path.exists(sock): time.sleep(0.01)
w=subprocess.Popen([BIN,"wait","-a","unix!"+sock,"/usage/wait"],env=env,stdout=subprocess.PIPE,text=True)
print("first:", w.stdout.readline().strip())
lat=[]
for n in range(2,7):
    time.sleep(2)
    t=time.time()
    with open(path,"a") as f: f.write(reply(n,time.time(),1000*n,10)+"\n")
    line=w.stdout.readline()
    lat.append(time.time()-t)
print("latencies ms:", [round(x*1000) for x in lat])
w.kill(); d.kill(); shutil.rmtree(root)
