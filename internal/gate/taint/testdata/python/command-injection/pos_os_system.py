import os
import subprocess

from flask import Flask, request

app = Flask(__name__)


def run_ping(host):
    os.system("ping -c 1 " + host)  # taint: command-injection


@app.route("/ping", methods=["POST"])
def ping():
    target = request.form["host"]
    run_ping(target)
    out = subprocess.check_output("nslookup %s" % target, shell=True)  # taint: command-injection
    return out
