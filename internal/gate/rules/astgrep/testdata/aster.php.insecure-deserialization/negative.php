<?php
$prefs = json_decode($_COOKIE['prefs'], true);
$cart = unserialize($_POST['cart'], ['allowed_classes' => false]);
$cached = unserialize(file_get_contents('/var/cache/app/data.ser'));
