package testkit

import (
	"archive/tar"
	"bytes"
	"fmt"
	"path"
	"strconv"
)

// TarHeaderBlock is one 512-byte ustar header block written by hand (its
// checksum set), for the entries archive/tar's Writer refuses to produce.
func TarHeaderBlock(name string, typ byte, size int64) []byte {
	b := rawHeader(name, typ, size, false)
	setChecksum(b)
	return b
}

// SparseBombs are archives of one GNU sparse file, name, that declares
// size bytes in a few kilobytes (512 bytes of data sit at size-512), in each
// encoding GNU tar writes: the old GNU header (typeflag 'S') and the PAX
// versions 0.0, 0.1 and 1.0. archive/tar reads each as a regular file of
// size bytes, filling the holes with zeros: an extractor that copies what it
// reads writes all of them.
func SparseBombs(name string, size int64) map[string][]byte {
	at := size - 512
	sz, off := strconv.FormatInt(size, 10), strconv.FormatInt(at, 10)
	return map[string][]byte{
		"GNU old ('S')": gnuSparse(name, size, at),
		"PAX 0.0": paxSparse(name, nil, "GNU.sparse.size", sz, "GNU.sparse.numblocks", "1",
			"GNU.sparse.offset", off, "GNU.sparse.numbytes", "512"),
		"PAX 0.1": paxSparse(name, nil, "GNU.sparse.size", sz, "GNU.sparse.numblocks", "1",
			"GNU.sparse.map", off+",512"),
		"PAX 1.0": paxSparse("GNUSparseFile.0/"+path.Base(name), pad([]byte("1\n"+off+"\n512\n")),
			"GNU.sparse.major", "1", "GNU.sparse.minor", "0", "GNU.sparse.name", name, "GNU.sparse.realsize", sz),
	}
}

func rawHeader(name string, typ byte, size int64, gnu bool) []byte {
	b := make([]byte, 512)
	copy(b[0:100], name)
	copy(b[100:108], "0000644\x00")
	copy(b[108:116], "0000000\x00")
	copy(b[116:124], "0000000\x00")
	copy(b[124:136], fmt.Sprintf("%011o\x00", size))
	copy(b[136:148], "14723450000\x00")
	b[156] = typ
	if gnu {
		copy(b[257:265], "ustar  \x00")
	} else {
		copy(b[257:265], "ustar\x0000")
	}
	return b
}

func setChecksum(b []byte) {
	copy(b[148:156], "        ")
	var sum int64
	for _, c := range b {
		sum += int64(c)
	}
	copy(b[148:156], fmt.Sprintf("%06o\x00 ", sum))
}

func pad(b []byte) []byte {
	if r := len(b) % 512; r != 0 {
		b = append(b, make([]byte, 512-r)...)
	}
	return b
}

// paxRecords encodes PAX records ("%d key=value\n", the length counting itself).
func paxRecords(kv ...string) []byte {
	var out []byte
	for i := 0; i < len(kv); i += 2 {
		rec := " " + kv[i] + "=" + kv[i+1] + "\n"
		n := len(rec) + len(strconv.Itoa(len(rec)))
		if len(strconv.Itoa(n)) != len(strconv.Itoa(len(rec))) {
			n++
		}
		out = append(out, strconv.Itoa(n)+rec...)
	}
	return out
}

// paxSparse is a PAX archive of one GNU sparse file: the extended header with
// records, then the file's header and its physical data (data, then 512 'x').
func paxSparse(name string, data []byte, kv ...string) []byte {
	recs := paxRecords(kv...)
	out := append(TarHeaderBlock("PaxHeaders.0/"+name, tar.TypeXHeader, int64(len(recs))), pad(recs)...)
	body := append(append([]byte(nil), data...), bytes.Repeat([]byte("x"), 512)...)
	out = append(out, TarHeaderBlock(name, tar.TypeReg, int64(len(body)))...)
	out = append(out, pad(body)...)
	return append(out, make([]byte, 1024)...)
}

// gnuSparse is the old GNU encoding: typeflag 'S', the map in the header.
func gnuSparse(name string, size, at int64) []byte {
	h := rawHeader(name, tar.TypeGNUSparse, 512, true)
	copy(h[386:398], fmt.Sprintf("%011o\x00", at))
	copy(h[398:410], fmt.Sprintf("%011o\x00", 512))
	copy(h[483:495], fmt.Sprintf("%011o\x00", size))
	setChecksum(h)
	out := append(h, bytes.Repeat([]byte("x"), 512)...)
	return append(out, make([]byte, 1024)...)
}
