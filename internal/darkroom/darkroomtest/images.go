// Package darkroomtest makes the images darkroom's tests upload, with the
// standard library's encoders (and WebP's): a rotated-EXIF JPEG, an
// animated GIF, a WebP, a PNG with an alpha channel, a truncated file, a
// decompression bomb, a PDF and a PNG that is also a PDF.
package darkroomtest

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/color/palette"
	"image/gif"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/gen2brain/webp"
)

// gradient is a w×h image whose left half is red and right half blue, so
// an orientation shows.
func gradient(w, h int, alpha uint8) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.NRGBA{R: 220, G: 20, B: 20, A: alpha}
			if x >= w/2 {
				c = color.NRGBA{R: 20, G: 20, B: 220, A: alpha}
			}
			img.SetNRGBA(x, y, c)
		}
	}
	return img
}

// PNG is a w×h opaque PNG.
func PNG(t testing.TB, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, gradient(w, h, 255)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// AlphaPNG is a w×h PNG, half transparent.
func AlphaPNG(t testing.TB, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, gradient(w, h, 128)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// JPEG is a w×h JPEG.
func JPEG(t testing.TB, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, gradient(w, h, 255), &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// RotatedJPEG is a w×h JPEG with an EXIF block saying orientation o (6 is
// "rotate 90° clockwise to show") and a GPS tag pointer, which no variant
// may carry.
func RotatedJPEG(t testing.TB, w, h, o int) []byte {
	t.Helper()
	plain := JPEG(t, w, h)
	// TIFF, little-endian: IFD0 with Orientation and a GPS IFD pointer.
	var tiff bytes.Buffer
	tiff.WriteString("II")
	_ = binary.Write(&tiff, binary.LittleEndian, uint16(42))
	_ = binary.Write(&tiff, binary.LittleEndian, uint32(8))
	_ = binary.Write(&tiff, binary.LittleEndian, uint16(2))
	for _, e := range [][4]uint32{{0x0112, 3, 1, uint32(o)}, {0x8825, 4, 1, 38}} {
		_ = binary.Write(&tiff, binary.LittleEndian, uint16(e[0]))
		_ = binary.Write(&tiff, binary.LittleEndian, uint16(e[1]))
		_ = binary.Write(&tiff, binary.LittleEndian, e[2])
		_ = binary.Write(&tiff, binary.LittleEndian, e[3])
	}
	_ = binary.Write(&tiff, binary.LittleEndian, uint32(0))
	// The GPS IFD: one GPSLatitudeRef entry "N".
	_ = binary.Write(&tiff, binary.LittleEndian, uint16(1))
	_ = binary.Write(&tiff, binary.LittleEndian, uint16(1))
	_ = binary.Write(&tiff, binary.LittleEndian, uint16(2))
	_ = binary.Write(&tiff, binary.LittleEndian, uint32(2))
	tiff.Write([]byte{'N', 0, 0, 0})
	_ = binary.Write(&tiff, binary.LittleEndian, uint32(0))
	seg := append([]byte("Exif\x00\x00"), tiff.Bytes()...)
	var out bytes.Buffer
	out.Write(plain[:2])
	out.Write([]byte{0xff, 0xe1})
	_ = binary.Write(&out, binary.BigEndian, uint16(len(seg)+2))
	out.Write(seg)
	out.Write(plain[2:])
	return out.Bytes()
}

// AnimatedGIF is a w×h GIF of two frames.
func AnimatedGIF(t testing.TB, w, h int) []byte {
	t.Helper()
	g := &gif.GIF{}
	for i := range 2 {
		f := image.NewPaletted(image.Rect(0, 0, w, h), palette.Plan9)
		for y := range h {
			for x := range w {
				f.SetColorIndex(x, y, uint8((x+y+i*40)%200))
			}
		}
		g.Image = append(g.Image, f)
		g.Delay = append(g.Delay, 10)
	}
	var b bytes.Buffer
	if err := gif.EncodeAll(&b, g); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// WebP is a w×h lossy WebP.
func WebP(t testing.TB, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := webp.Encode(&b, gradient(w, h, 255), webp.Options{Quality: 80}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Truncated is a PNG cut in half.
func Truncated(t testing.TB) []byte {
	t.Helper()
	p := PNG(t, 64, 64)
	return p[:len(p)/2]
}

func chunk(typ string, data []byte) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.BigEndian, uint32(len(data)))
	b.WriteString(typ)
	b.Write(data)
	_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(typ), data...)))
	return b.Bytes()
}

// Bomb is a tiny PNG whose header declares 100,000 × 100,000 pixels.
func Bomb() []byte {
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr, 100_000)
	binary.BigEndian.PutUint32(ihdr[4:], 100_000)
	ihdr[8], ihdr[9] = 8, 2 // 8-bit RGB
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	b.Write(chunk("IHDR", ihdr))
	// A compressed run of zeros, which would inflate to 30 GB.
	b.Write(chunk("IDAT", []byte{0x78, 0x9c, 0xed, 0xc1, 0x01, 0x0d, 0x00, 0x00, 0x00, 0xc2, 0xa0, 0xf7, 0x4f, 0x6d, 0x0e, 0x37, 0xa0, 0x00, 0x00, 0x00}))
	b.Write(chunk("IEND", nil))
	return b.Bytes()
}

// PDF is a minimal PDF.
func PDF() []byte {
	return []byte("%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")
}

// Polyglot is a valid PNG that PDF readers also open: a text chunk early
// in the file carries a PDF header.
func Polyglot(t testing.TB) []byte {
	t.Helper()
	p := PNG(t, 16, 16)
	text := chunk("tEXt", append([]byte("Comment\x00"), PDF()...))
	return append(append(append([]byte{}, p[:33]...), text...), p[33:]...)
}
