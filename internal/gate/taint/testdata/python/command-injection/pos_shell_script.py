# The command line reaching a shell: as the script after -c of a shell the
# process replaces itself with or spawns, and parsed by argparse/optparse.
import argparse
import optparse
import os
import sys


def relaunch():
    script = sys.argv[1]
    os.execl("/bin/sh", "sh", "-c", script)  # taint: command-injection


def background():
    job = os.environ["JOB"]
    os.spawnv(os.P_NOWAIT, "/bin/bash", ["bash", "-c", job])  # taint: command-injection


def cli():
    parser = argparse.ArgumentParser()
    parser.add_argument("target")
    opts = parser.parse_args()
    os.system("ping -c 1 " + opts.target)  # taint: command-injection


def legacy_cli():
    parser = optparse.OptionParser()
    parser.add_option("--host", dest="host")
    (options, rest) = parser.parse_args()
    os.popen("host " + options.host)  # taint: command-injection
