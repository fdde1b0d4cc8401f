package ocitest

// MemoryHolder is a Python program for memory-snapshot tests: it keeps a
// number only in its memory (drawn at random, never written until asked);
// /work/ask makes it answer the number in /work/answer and count on by one,
// /work/set replaces the number. A fork restored from a checkpoint answers
// what the original held.
const MemoryHolder = `import os, random, time
v = random.getrandbits(40)
while True:
    if os.path.exists("/work/set"):
        v = int(open("/work/set").read())
        os.remove("/work/set")
    if os.path.exists("/work/ask"):
        os.remove("/work/ask")
        with open("/work/answer.tmp", "w") as f:
            f.write(str(v))
        os.rename("/work/answer.tmp", "/work/answer")
        v += 1
    time.sleep(0.02)
`

// AskHolder is the shell script that asks MemoryHolder for its number and
// prints it (failing after about 10 s without an answer).
const AskHolder = `touch /work/ask; i=0
while [ ! -f /work/answer ]; do i=$((i+1)); [ $i -gt 500 ] && { echo "no answer" >&2; exit 1; }; sleep 0.02; done
cat /work/answer; rm /work/answer`
