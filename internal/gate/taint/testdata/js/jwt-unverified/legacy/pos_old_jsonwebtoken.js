// jsonwebtoken before 4.2.2 accepts "none" tokens whatever the options.
const jwt = require("jsonwebtoken");

function user(token, publicKey) {
  return jwt.verify(token, publicKey, { algorithms: ["RS256"] }); // taint: jwt-unverified
}

module.exports = { user };
