// HTML built from input and sent as the response.
const express = require("express");
const http = require("http");

const app = express();

app.get("/hello", (req, res) => {
  const name = req.query.name || "world";
  res.send("<h1>Hello " + name + "</h1>"); // taint: xss
});

app.get("/echo", (req, res) => {
  res.status(200).send(req.query.msg); // taint: xss
});

function page(title, body) {
  return `<html><head><title>${title}</title></head><body>${body}</body></html>`;
}

app.post("/preview", (req, res) => {
  const html = page("Preview", req.body.text);
  res.write(html); // taint: xss
  res.end();
});

http.createServer((req, res) => {
  const u = new URL(req.url, "http://localhost");
  res.writeHead(200, { "Content-Type": "text/html" });
  res.end("<p>" + u.searchParams.get("q") + "</p>"); // taint: xss
}).listen(8080);
