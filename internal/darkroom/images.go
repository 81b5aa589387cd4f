package darkroom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"

	"golang.org/x/image/draw"
	"golang.org/x/image/webp"
)

// Sniff returns the content type of data as darkroom keeps it, or "" when
// it is none of the allowed types. A file whose leading bytes are also
// read as another document (a PDF or HTML behind an image's magic, or an
// image behind a PDF's) is a polyglot and answers "".
func Sniff(data []byte) string {
	head := data
	if len(head) > 1024 {
		head = head[:1024]
	}
	var t string
	switch {
	case bytes.HasPrefix(data, []byte("\xff\xd8\xff")):
		t = TypeJPEG
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		t = TypePNG
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		t = TypeGIF
	case len(data) >= 12 && bytes.Equal(data[:4], []byte("RIFF")) && bytes.Equal(data[8:12], []byte("WEBP")):
		t = TypeWebP
	case bytes.HasPrefix(data, []byte("%PDF-")):
		return TypePDF
	default:
		return ""
	}
	// PDF readers accept %PDF- anywhere in the first 1024 bytes, browsers
	// sniff markup; an image carrying either is refused.
	lower := bytes.ToLower(head)
	if bytes.Contains(head, []byte("%PDF-")) || bytes.Contains(lower, []byte("<html")) || bytes.Contains(lower, []byte("<script")) {
		return ""
	}
	return t
}

// Inspected is what Inspect learnt of a file.
type Inspected struct {
	ContentType string
	Width       int
	Height      int
}

// IsImage reports whether contentType is one darkroom makes variants of.
func IsImage(contentType string) bool { return contentType != TypePDF && Allowed(contentType) }

// config reads the header of an image of type t.
func config(t string, r io.Reader) (image.Config, error) {
	switch t {
	case TypeJPEG:
		return jpeg.DecodeConfig(r)
	case TypePNG:
		return png.DecodeConfig(r)
	case TypeGIF:
		return gif.DecodeConfig(r)
	case TypeWebP:
		return webp.DecodeConfig(r)
	}
	return image.Config{}, fmt.Errorf("no decoder for %s", t)
}

func decode(t string, r io.Reader) (image.Image, error) {
	switch t {
	case TypeJPEG:
		return jpeg.Decode(r)
	case TypePNG:
		return png.Decode(r)
	case TypeGIF:
		return gif.Decode(r) // the first frame
	case TypeWebP:
		return webp.Decode(r)
	}
	return nil, fmt.Errorf("no decoder for %s", t)
}

// errPixels is an image whose header declares more than the pixel limit.
var errPixels = errors.New("too many pixels")

// header reads data's header and refuses, before any decoding, an image
// over maxPixels.
func header(t string, data []byte, maxPixels int64) (image.Config, error) {
	cfg, err := config(t, bytes.NewReader(data))
	if err != nil {
		return cfg, err
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > maxPixels {
		return cfg, errPixels
	}
	return cfg, nil
}

// orientation returns a JPEG's EXIF orientation (1 to 8), 1 when it has
// none or data is not a JPEG.
func orientation(data []byte) int {
	if !bytes.HasPrefix(data, []byte("\xff\xd8")) {
		return 1
	}
	i := 2
	for i+4 <= len(data) {
		if data[i] != 0xff {
			return 1
		}
		marker := data[i+1]
		if marker == 0xd8 || (marker >= 0xd0 && marker <= 0xd7) || marker == 0x01 {
			i += 2
			continue
		}
		if marker == 0xda || marker == 0xd9 { // the image data starts: no EXIF before it
			return 1
		}
		n := int(binary.BigEndian.Uint16(data[i+2:]))
		if n < 2 || i+2+n > len(data) {
			return 1
		}
		seg := data[i+4 : i+2+n]
		if marker == 0xe1 && bytes.HasPrefix(seg, []byte("Exif\x00\x00")) {
			return exifOrientation(seg[6:])
		}
		i += 2 + n
	}
	return 1
}

// exifOrientation reads tag 0x0112 of IFD0 of a TIFF structure.
func exifOrientation(tiff []byte) int {
	if len(tiff) < 8 {
		return 1
	}
	var bo binary.ByteOrder
	switch string(tiff[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return 1
	}
	off := int(bo.Uint32(tiff[4:]))
	if off < 8 || off+2 > len(tiff) {
		return 1
	}
	n := int(bo.Uint16(tiff[off:]))
	for k := range n {
		e := off + 2 + 12*k
		if e+12 > len(tiff) {
			return 1
		}
		if bo.Uint16(tiff[e:]) == 0x0112 {
			v := int(bo.Uint16(tiff[e+8:]))
			if v >= 1 && v <= 8 {
				return v
			}
			return 1
		}
	}
	return 1
}

// swapsAxes reports whether orientation o turns the image a quarter.
func swapsAxes(o int) bool { return o >= 5 }

// orient applies EXIF orientation o to img.
func orient(img image.Image, o int) image.Image {
	if o <= 1 || o > 8 {
		return img
	}
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	dw, dh := w, h
	if swapsAxes(o) {
		dw, dh = h, w
	}
	dst := image.NewNRGBA(image.Rect(0, 0, dw, dh))
	for y := range h {
		for x := range w {
			var dx, dy int
			switch o {
			case 2:
				dx, dy = w-1-x, y
			case 3:
				dx, dy = w-1-x, h-1-y
			case 4:
				dx, dy = x, h-1-y
			case 5:
				dx, dy = y, x
			case 6:
				dx, dy = h-1-y, x
			case 7:
				dx, dy = h-1-y, w-1-x
			case 8:
				dx, dy = y, w-1-x
			}
			dst.Set(dx, dy, img.At(b.Min.X+x, b.Min.Y+y))
		}
	}
	return dst
}

// Format of a variant for an original of type t: WebP when the client
// accepts it, else PNG for originals that may carry transparency and JPEG
// for the rest.
func Format(t string, acceptsWebP bool) string {
	switch {
	case acceptsWebP:
		return "webp"
	case t == TypePNG || t == TypeGIF:
		return "png"
	}
	return "jpeg"
}

// FormatType is the content type of a variant format.
func FormatType(format string) string {
	switch format {
	case "webp":
		return TypeWebP
	case "png":
		return TypePNG
	}
	return TypeJPEG
}

// Scale renders img at preset p: cover crops the centre to p's aspect
// and fills WxH, fit fits within WxH and never enlarges. A source at
// least twice as large as the target each way is first averaged down by
// a whole factor (shrink) to between two and four times the target, then
// Catmull-Rom makes the final step, as libvips's shrink-then-reduce does:
// Catmull-Rom alone keeps an intermediate of the target's width by the
// source's height (33 MiB for a 12-MP photograph's card) where this
// allocates 11 MiB in all, and the result is within a level or two of
// Catmull-Rom's alone per channel on average (decision 0032).
func Scale(img image.Image, p Preset) *image.NRGBA {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	src, dw, dh := b, 0, 0
	if p.Mode == ModeCover {
		// Scale so the image covers WxH, then crop the centre.
		r := max(float64(p.Width)/float64(w), float64(p.Height)/float64(h))
		cw, ch := int(float64(p.Width)/r+0.5), int(float64(p.Height)/r+0.5)
		cw, ch = min(max(cw, 1), w), min(max(ch, 1), h)
		src = image.Rect(b.Min.X+(w-cw)/2, b.Min.Y+(h-ch)/2, b.Min.X+(w-cw)/2+cw, b.Min.Y+(h-ch)/2+ch)
		dw, dh = p.Width, p.Height
	} else {
		// fit: within WxH, never enlarged.
		r := min(float64(p.Width)/float64(w), float64(p.Height)/float64(h), 1)
		dw, dh = max(int(float64(w)*r+0.5), 1), max(int(float64(h)*r+0.5), 1)
	}
	if k := min(src.Dx()/(2*dw), src.Dy()/(2*dh)); k >= 2 {
		if small := shrink(img, src, k); small != nil {
			img, src = small, small.Bounds()
		}
	}
	dst := image.NewNRGBA(image.Rect(0, 0, dw, dh))
	draw.CatmullRom.Scale(dst, dst.Bounds(), img, src, draw.Src, nil)
	return dst
}

// flatten draws img over white, for JPEG which has no alpha.
func flatten(img *image.NRGBA) *image.RGBA {
	dst := image.NewRGBA(img.Bounds())
	draw.Draw(dst, dst.Bounds(), &image.Uniform{C: color.White}, image.Point{}, draw.Src)
	draw.Draw(dst, dst.Bounds(), img, img.Bounds().Min, draw.Over)
	return dst
}

// sniffHTTP is the standard library's view, used only to name what a
// refused file looks like.
func sniffHTTP(data []byte) string { return http.DetectContentType(data) }
