<?php
include __DIR__ . '/header.php';

function download() {
    $name = basename($_GET['file']);
    readfile('/srv/files/' . $name);
}
