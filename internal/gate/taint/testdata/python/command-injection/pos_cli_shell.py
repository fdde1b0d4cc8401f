import os
import sys


def main():
    os.system("tar czf backup.tgz " + sys.argv[1])  # taint: command-injection
