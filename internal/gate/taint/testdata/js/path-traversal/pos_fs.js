// File names from requests reach the file system.
const express = require("express");
const fs = require("fs");
const path = require("path");
const { unlink } = require("fs/promises");

const app = express();
const UPLOADS = path.join(__dirname, "uploads");

app.get("/files/:name", (req, res) => {
  const file = path.join(UPLOADS, req.params.name);
  fs.readFile(file, (err, data) => res.type("text/plain").send(data)); // taint: path-traversal
});

app.get("/download", (req, res) => {
  res.download(req.query.file); // taint: path-traversal
});

app.get("/view", (req, res) => {
  res.sendFile(path.resolve(UPLOADS, req.query.name)); // taint: path-traversal
});

app.delete("/files/:name", async (req, res) => {
  await unlink(UPLOADS + "/" + req.params.name); // taint: path-traversal
  res.end();
});

app.get("/stream", (req, res) => {
  fs.createReadStream(`${UPLOADS}/${req.query.f}`).pipe(res); // taint: path-traversal
});
