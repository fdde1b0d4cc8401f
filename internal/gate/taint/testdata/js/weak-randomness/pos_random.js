// Math.random() used for values that must not be guessable.
function resetToken() {
  return Math.random().toString(36).slice(2); // taint: weak-randomness
}

function newSession(user) {
  const sessionId = Math.floor(Math.random() * 1e12).toString(16); // taint: weak-randomness
  user.apiKey = "k_" + Math.random(); // taint: weak-randomness
  return { sessionId, token: resetToken() };
}

module.exports = { newSession };
