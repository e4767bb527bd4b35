"""Runs a command in a real pseudo-terminal and types into it like a person.

usage: pty-drive.py STEPS_JSON -- command args...
STEPS_JSON is a list of {"expect": regex, "send": text}: wait until the output since the last match
matches `expect`, then type `send`. Prints one JSON object: {"output", "status", "timedOut"}.
"""
import json, os, pty, re, select, signal, sys, time

steps = json.loads(sys.argv[1])
command = sys.argv[sys.argv.index("--") + 1:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(command[0], command)

output, since, timed_out = "", 0, False
deadline = time.time() + 60

def read_some(timeout):
    global output
    ready, _, _ = select.select([fd], [], [], timeout)
    if not ready:
        return True
    try:
        data = os.read(fd, 4096)
    except OSError:
        return False
    if not data:
        return False
    output += data.decode("utf8", "replace")
    return True

alive = True
for step in steps:
    pattern = re.compile(step["expect"])
    while alive and not pattern.search(output, since):
        if time.time() > deadline:
            timed_out = True
            break
        alive = read_some(0.2)
    if timed_out or not alive:
        break
    since = pattern.search(output, since).end()
    time.sleep(0.1)
    os.write(fd, step["send"].encode("utf8"))

while alive and time.time() < deadline:
    alive = read_some(0.2)
if alive:
    os.kill(pid, signal.SIGKILL)
_, status = os.waitpid(pid, 0)
code = os.waitstatus_to_exitcode(status)
print(json.dumps({"output": output, "status": code, "timedOut": timed_out or time.time() > deadline}))
