import os
import sys


def load_config():
    with open(os.environ.get("APP_CONFIG", "app.toml")) as f:
        return f.read()


def main():
    with open(sys.argv[1]) as f:
        print(f.read())
