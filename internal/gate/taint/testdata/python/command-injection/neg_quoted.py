import os
import shlex
import subprocess

from flask import Flask, request

app = Flask(__name__)


@app.route("/ping")
def ping():
    host = request.args["host"]
    subprocess.run(["ping", "-c", "1", host], check=False)
    os.system("ping -c 1 " + shlex.quote(host))
    subprocess.run("uptime", shell=True)
    mode = request.args.get("mode")
    if mode in {"fast", "slow"}:
        os.system("run-" + mode)
    return "done"
