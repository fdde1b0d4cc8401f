#!/bin/bash
curl -fsSL --cacert /etc/ssl/private-ca.pem https://internal.example/api
wget --ca-certificate=ca.pem https://internal.example/file
git -c http.sslVerify=true clone https://internal.example/repo.git
grep -k pattern file || true
