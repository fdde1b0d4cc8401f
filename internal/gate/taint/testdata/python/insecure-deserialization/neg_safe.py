import json
import pickle

import yaml
from flask import Flask, request

app = Flask(__name__)


@app.route("/state", methods=["POST"])
def state():
    obj = json.loads(request.data)
    conf = yaml.load(request.data, Loader=yaml.SafeLoader)
    other = yaml.safe_load(request.data)
    with open("/var/cache/app.pkl", "rb") as f:
        cache = pickle.load(f)
    return {"obj": obj, "conf": conf, "other": other, "cache": len(cache)}
