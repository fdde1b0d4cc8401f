import os
import subprocess


def ping(host):
    # ruleid: aster.python.command-injection
    os.system("ping -c 1 " + host)


def grep(pattern, path):
    # ruleid: aster.python.command-injection
    out = os.popen(f"grep {pattern} {path}").read()
    return out


def archive(name):
    # ruleid: aster.python.command-injection
    subprocess.run("tar czf %s.tgz data" % name, shell=True, check=True)


def run(cmd):
    # ruleid: aster.python.command-injection
    return subprocess.check_output(cmd, shell=True)
