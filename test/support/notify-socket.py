# A service manager's end of the notify protocol (sd_notify(3)), for test/service-notify.test.ts:
# binds a unix datagram socket at argv[1] ("@name": an abstract one), prints "listening", then
# each datagram it gets as one JSON string per line. A message with file descriptors (the
# BARRIER=1 of systemd-notify, which waits until they are closed) has them closed, as systemd does.
import array
import json
import os
import socket
import sys

name = sys.argv[1]
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind("\0" + name[1:] if name.startswith("@") else name)
print("listening", flush=True)
while True:
    data, ancillary, _flags, _addr = sock.recvmsg(4096, socket.CMSG_SPACE(64 * 4))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds = array.array("i")
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
            for fd in fds:
                os.close(fd)
    print(json.dumps(data.decode("utf-8", "replace")), flush=True)
