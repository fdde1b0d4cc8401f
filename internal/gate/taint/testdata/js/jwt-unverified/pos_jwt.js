// Tokens trusted without verifying their signature.
const express = require("express");
const jwt = require("jsonwebtoken");

const app = express();
const KEY = process.env.JWT_KEY;

app.get("/me", (req, res) => {
  const token = req.headers.authorization.replace("Bearer ", "");
  const claims = jwt.decode(token); // taint: jwt-unverified
  res.json({ user: claims.sub });
});

function check(token) {
  return jwt.verify(token, null, { algorithms: ["none", "HS256"] }); // taint: jwt-unverified
}

function checkOld(token) {
  return jwt.verify(token, KEY, { ignoreExpiration: true }); // taint: jwt-unverified
}

module.exports = { app, check, checkOld };
