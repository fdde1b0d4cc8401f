import base64
import pickle

import yaml
from flask import Flask, request

app = Flask(__name__)


def load_state(blob):
    return pickle.loads(base64.b64decode(blob))  # taint: insecure-deserialization


@app.route("/state", methods=["POST"])
def state():
    obj = load_state(request.cookies.get("state"))
    conf = yaml.load(request.data, Loader=yaml.Loader)  # taint: insecure-deserialization
    return {"obj": str(obj), "conf": str(conf)}
