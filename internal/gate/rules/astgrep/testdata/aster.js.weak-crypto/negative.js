const crypto = require("crypto");

function etag(body) {
    return crypto.createHash("md5").update(body).digest("hex");
}

function encrypt(text, key) {
    const iv = crypto.randomBytes(12);
    const cipher = crypto.createCipheriv("aes-256-gcm", key, iv);
    return Buffer.concat([cipher.update(text), cipher.final()]);
}

function strong(password, salt) {
    return crypto.scryptSync(password, salt, 64);
}
