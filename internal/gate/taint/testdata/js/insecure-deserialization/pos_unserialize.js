// Cookies and bodies deserialized by libraries that can run code.
const express = require("express");
const serialize = require("node-serialize");
const yaml = require("js-yaml");

const app = express();

app.get("/prefs", (req, res) => {
  const raw = Buffer.from(req.cookies.prefs, "base64").toString();
  const prefs = serialize.unserialize(raw); // taint: insecure-deserialization
  res.json(prefs);
});

app.post("/config", (req, res) => {
  const config = yaml.load(req.body.yaml); // taint: insecure-deserialization
  res.json(config);
});
