# Environment variables that exist to name the program the user wants run:
# running them is their purpose ($PAGER, $EDITOR, $GIT_PAGER...).
import os
import shlex
import subprocess


def page():
    path = "README"
    pager = os.environ.get("PAGER", "less")
    parts = shlex.split(pager)
    subprocess.call(parts + [path])


def edit():
    path = "README"
    os.system(os.getenv("VISUAL") or os.environ["EDITOR"] + " " + path)


def git_pager():
    text = "log"
    cmd = os.environ.get("GIT_PAGER", "more")
    subprocess.run(cmd, shell=True, input=text.encode())


def build():
    path = "all"
    # a variable that does not name a program is still a command injection
    flags = os.environ.get("BUILD_FLAGS", "")
    os.system("make " + flags + " " + path)  # taint: command-injection


def editor_with_args():
    path = "README"
    # a name that merely contains EDITOR is not the convention
    tool = os.environ["EDITOR_ARGS"]
    os.system("vi " + tool + " " + path)  # taint: command-injection
