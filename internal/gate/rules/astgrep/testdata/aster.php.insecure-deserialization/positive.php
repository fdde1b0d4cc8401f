<?php
// ruleid: aster.php.insecure-deserialization
$prefs = unserialize($_COOKIE['prefs']);

function load_cart() {
    $raw = base64_decode($_POST['cart']);
    // ruleid: aster.php.insecure-deserialization
    return unserialize($raw);
}
