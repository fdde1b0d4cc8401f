<?php
// ruleid: aster.php.path-traversal
include $_GET['page'] . '.php';

function download() {
    $name = $_GET['file'];
    // ruleid: aster.php.path-traversal
    readfile('/srv/files/' . $name);
}
