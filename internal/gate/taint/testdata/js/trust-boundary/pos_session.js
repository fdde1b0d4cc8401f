// Request data stored in the session, which later code trusts.
const express = require("express");
const Koa = require("koa");

const app = express();

app.post("/prefs", (req, res) => {
  req.session.role = req.body.role; // taint: trust-boundary
  res.redirect("/");
});

const koa = new Koa();
koa.use(async (ctx) => {
  ctx.session.user = ctx.query.user; // taint: trust-boundary
  ctx.body = "ok";
});
