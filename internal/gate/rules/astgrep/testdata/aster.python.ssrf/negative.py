import requests
from flask import request

API = "https://api.example.com/v1"


def fixed():
    return requests.get(API + "/status", timeout=5).json()


def lookup():
    name = request.args.get("name")
    return requests.get(API + "/users", params={"name": name}, timeout=5).json()


def field():
    return request.args.get("url")


def mixed(server):
    name = request.args.get("name")
    return requests.get(server.url, timeout=5).text + name
