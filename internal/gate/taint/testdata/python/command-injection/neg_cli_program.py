import subprocess
import sys


def main():
    subprocess.run([sys.argv[1], "--check"], check=True)
