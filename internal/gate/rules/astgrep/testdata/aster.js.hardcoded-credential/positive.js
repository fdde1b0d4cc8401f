// ruleid: aster.js.hardcoded-credential
const dbPassword = "h7Gq2vLx9Rk";

module.exports = {
    db: {
        user: "app",
        // ruleid: aster.js.hardcoded-credential
        password: "Zr8!kQ2pLw",
    },
};

function configure(client) {
    // ruleid: aster.js.hardcoded-credential
    client.apiKey = "AKd93jfLq0wZ";
}
