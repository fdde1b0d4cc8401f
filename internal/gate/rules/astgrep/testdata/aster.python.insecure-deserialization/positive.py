import pickle

import yaml


def load_session(blob):
    # ruleid: aster.python.insecure-deserialization
    return pickle.loads(blob)


def read_config(path):
    with open(path) as f:
        # ruleid: aster.python.insecure-deserialization
        return yaml.load(f)


def read_all(stream):
    # ruleid: aster.python.insecure-deserialization
    return list(yaml.load_all(stream, Loader=yaml.Loader))


def unsafe(text):
    # ruleid: aster.python.insecure-deserialization
    return yaml.unsafe_load(text)
