// Math.random() for what may be guessed; crypto for secrets.
const crypto = require("crypto");

function shuffle(list) {
  for (let i = list.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [list[i], list[j]] = [list[j], list[i]];
  }
  return list;
}

function resetToken() {
  return crypto.randomBytes(32).toString("hex");
}

const delay = 100 + Math.random() * 50;
const color = "#" + Math.floor(Math.random() * 0xffffff).toString(16);

module.exports = { shuffle, resetToken, delay, color };
