// Zip slip: an archive's entry names choose where files are written.
const fs = require("fs");
const unzipper = require("unzipper");
const AdmZip = require("adm-zip");

function extract(archivePath, target) {
  fs.createReadStream(archivePath)
    .pipe(unzipper.Parse())
    .on("entry", (entry) => {
      entry.pipe(fs.createWriteStream(target + "/" + entry.path)); // taint: path-traversal
    });
}

function restore(req, res) {
  const zip = new AdmZip(req.files.backup.data);
  zip.extractAllTo("/srv/restore", true); // taint: path-traversal
  res.end();
}

module.exports = { extract, restore };
