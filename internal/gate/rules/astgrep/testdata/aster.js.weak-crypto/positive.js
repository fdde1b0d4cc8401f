const crypto = require("crypto");

function hashPassword(password) {
    // ruleid: aster.js.weak-crypto
    return crypto.createHash("md5").update(password).digest("hex");
}

function encrypt(text, key) {
    // ruleid: aster.js.weak-crypto
    const cipher = crypto.createCipher("aes-256-cbc", key);
    return cipher.update(text, "utf8", "hex") + cipher.final("hex");
}

function legacy(key, iv) {
    // ruleid: aster.js.weak-crypto
    return crypto.createCipheriv("des-ede3-cbc", key, iv);
}

function ecb(key) {
    // ruleid: aster.js.weak-crypto
    return crypto.createCipheriv("aes-128-ecb", key, null);
}
