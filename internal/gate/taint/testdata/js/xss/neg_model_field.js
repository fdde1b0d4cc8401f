// A record built with new Model({...}) keeps each field apart: echoing the
// checked code says nothing of the unchecked note stored beside it.
const express = require("express");
const Entry = require("./entry-model");

const app = express();
const CODE = /^[A-Z0-9-]+$/;

app.post("/entries", async (req, res) => {
  const code = req.body.code;
  const note = req.body.note;
  if (!CODE.test(code)) {
    res.status(400).send("bad code");
    return;
  }
  const entry = new Entry({ code, note });
  await entry.save();
  res.send("<p>Saved " + entry.code + "</p>");
});

const { Record } = require("tiny-records");

app.post("/records", (req, res) => {
  const code = req.body.code;
  if (!CODE.test(code)) return res.status(400).end();
  const rec = new Record({ code, note: req.body.note });
  return res.send("<p>Kept " + rec.code + "</p>");
});
