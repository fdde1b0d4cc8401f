// Data formats that build plain data only.
const express = require("express");
const yaml = require("js-yaml");
const serialize = require("node-serialize");

const app = express();

app.post("/config", (req, res) => {
  const config = yaml.safeLoad(req.body.yaml);
  const data = JSON.parse(req.body.json);
  const own = serialize.unserialize(serialize.serialize({ a: 1 }));
  res.json({ config, data, own });
});
