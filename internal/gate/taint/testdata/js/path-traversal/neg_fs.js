// The same file accesses made safe.
const express = require("express");
const fs = require("fs");
const path = require("path");

const app = express();
const UPLOADS = path.join(__dirname, "uploads");

app.get("/files/:name", (req, res) => {
  const file = path.join(UPLOADS, path.basename(req.params.name));
  fs.readFile(file, (err, data) => res.type("text/plain").send(data));
});

app.get("/view", (req, res) => {
  res.sendFile(req.query.name, { root: UPLOADS });
});

app.get("/checked", (req, res) => {
  const full = path.resolve(UPLOADS, req.query.name);
  if (!full.startsWith(UPLOADS + path.sep)) {
    return res.status(403).end();
  }
  fs.createReadStream(full).pipe(res);
});

app.get("/static", (req, res) => {
  fs.readFile(path.join(UPLOADS, "index.txt"), (err, data) => res.type("text/plain").send(data));
});
