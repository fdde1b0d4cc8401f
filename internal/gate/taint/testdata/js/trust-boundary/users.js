// A user store, as the fixtures use it.
const db = require("./db");

async function check(name, password) {
  return db.findUser(name, password);
}

module.exports = { check };
