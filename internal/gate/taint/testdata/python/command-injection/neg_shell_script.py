# Shells run with scripts the program wrote, and parsed options that never
# reach a shell.
import argparse
import os


def relaunch():
    os.execl("/bin/sh", "sh", "-c", "exec /usr/local/bin/worker --once")


def background():
    os.spawnv(os.P_NOWAIT, "/bin/bash", ["bash", "-c", "sleep 5"])


def cli():
    parser = argparse.ArgumentParser()
    parser.add_argument("--verbose", action="store_true")
    opts = parser.parse_args()
    print("verbose" if opts.verbose else "quiet")
