// Package seq writes the counters in lock tokens: storekit.AppendToken's,
// after its random prefix, and the in-process tokens of the locks
// held only in this process's memory.
package seq

// Append appends n's 8 bytes, big-endian, in unpadded base64url (11
// characters: 64 bits and two zero bits of padding), as
// base64.RawURLEncoding would write them, and returns the extended slice.
// Written by hand, with no allocation, because every acquisition makes a
// token.
func Append(dst []byte, n uint64) []byte {
	for shift := 58; shift >= 4; shift -= 6 {
		dst = append(dst, alphabet[n>>shift&63])
	}
	return append(dst, alphabet[n&15<<2])
}

// alphabet is the alphabet of base64.RawURLEncoding.
const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
