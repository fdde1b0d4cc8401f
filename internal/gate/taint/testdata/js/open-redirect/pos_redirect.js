// Redirects to a URL the request chooses.
const express = require("express");
const Koa = require("koa");

const app = express();

app.get("/login/done", (req, res) => {
  const next = req.query.next;
  res.redirect(next); // taint: open-redirect
});

app.get("/go", (req, res) => {
  res.redirect(301, req.query.to); // taint: open-redirect
});

app.get("/header", (req, res) => {
  res.setHeader("Location", "https://" + req.query.host + "/welcome"); // taint: open-redirect
  res.status(302).end();
});

app.get("/slash", (req, res) => {
  res.redirect("/" + req.query.path); // taint: open-redirect
});

const koa = new Koa();
koa.use(async (ctx) => {
  ctx.redirect(ctx.query.return_to); // taint: open-redirect
});
