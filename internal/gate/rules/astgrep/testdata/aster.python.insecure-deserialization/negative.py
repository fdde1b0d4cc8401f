import json
import pickle

import yaml


def read_config(path):
    with open(path) as f:
        return yaml.safe_load(f)


def read_loader(stream):
    return yaml.load(stream, Loader=yaml.SafeLoader)


def read_c(stream):
    return yaml.load(stream, yaml.CSafeLoader)


def save(obj):
    return pickle.dumps(obj)


def parse(text):
    return json.loads(text)


def roundtrip(obj):
    return pickle.loads(pickle.dumps(obj))
