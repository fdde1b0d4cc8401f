// The server requests URLs the client chooses.
const express = require("express");
const axios = require("axios");
const http = require("http");
const got = require("got");

const app = express();

app.get("/proxy", async (req, res) => {
  const r = await axios.get(req.query.url); // taint: ssrf
  res.json(r.data);
});

app.post("/hook", async (req, res) => {
  const target = req.body.callback;
  await fetch(target, { method: "POST" }); // taint: ssrf
  res.end();
});

app.get("/status", (req, res) => {
  http.get("http://" + req.query.host + "/health", (r) => res.sendStatus(r.statusCode)); // taint: ssrf
});

app.get("/avatar", async (req, res) => {
  const img = await got({ url: req.query.src }); // taint: ssrf
  res.type("image/png").send(img.rawBody);
});
