<?php
function calc($a, $b) {
    return $a + $b;
}

$handlers = ['list' => 'list_items', 'show' => 'show_item'];
call_user_func($handlers['list']);
