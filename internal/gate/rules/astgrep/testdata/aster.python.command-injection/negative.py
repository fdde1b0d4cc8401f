import os
import subprocess


def ping(host):
    subprocess.run(["ping", "-c", "1", host], check=True)


def fixed():
    os.system("make clean")
    subprocess.run("ls -l | wc -l", shell=True)


def no_shell(cmd):
    return subprocess.check_output(cmd, shell=False)


def listed(args):
    subprocess.call(["sh", "-c", "echo ok"], shell=True)
