// Programs run with argument arrays and no shell, or fixed commands.
const express = require("express");
const { execFile, exec, spawn } = require("child_process");

const app = express();
const TOOLS = new Set(["uptime", "whoami"]);

app.get("/ping", (req, res) => {
  execFile("ping", ["-c", "1", req.query.host], (err, out) => res.type("text/plain").send(out));
});

app.get("/uptime", (req, res) => {
  exec("uptime", (err, out) => res.type("text/plain").send(out));
});

app.get("/tool", (req, res) => {
  const tool = req.query.tool;
  if (!TOOLS.has(tool)) {
    return res.status(400).end();
  }
  exec(tool, (err, out) => res.type("text/plain").send(out));
});

app.get("/count", (req, res) => {
  const n = Number(req.query.n);
  spawn("seq", [String(n)]);
  exec("seq " + n);
  res.end();
});

const re = /a(b)/;
re.exec("ab");
