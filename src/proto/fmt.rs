//! One-line renderings of messages for `-D`, in the style of lib9p's
//! chatty9p (`Twalk tag 1 fid 0 newfid 1 nwname 2 0:claude 1:projects`).
