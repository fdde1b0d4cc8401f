// Requests to a fixed host, or to an allow-listed one.
const express = require("express");
const axios = require("axios");

const app = express();
const API = "https://api.example.com/v1/";
const HOSTS = ["images.example.com"];

app.get("/user", async (req, res) => {
  const r = await axios.get(API + "users/" + encodeURIComponent(req.query.id));
  res.json(r.data);
});

app.get("/search", async (req, res) => {
  const r = await fetch("https://search.example.com/q?term=" + req.query.term);
  res.json(await r.json());
});

app.get("/image", async (req, res) => {
  const u = new URL(req.query.src);
  if (!HOSTS.includes(u.hostname)) {
    return res.status(400).end();
  }
  const r = await axios.get(u.toString());
  res.type("image/png").send(r.data);
});
