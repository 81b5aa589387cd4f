package darkroom

import (
	"image"
	"image/color"
	"math"
	"runtime"
	"testing"

	"golang.org/x/image/draw"
)

// photo is a w×h test image of type kind with smooth gradients and fine
// detail, as a photograph has both.
func photo(kind string, w, h int) image.Image {
	var (
		img image.Image
		set func(x, y int, c color.NRGBA)
	)
	switch kind {
	case "ycbcr":
		m := image.NewYCbCr(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio420)
		img, set = m, func(x, y int, c color.NRGBA) {
			yy, cb, cr := color.RGBToYCbCr(c.R, c.G, c.B)
			m.Y[m.YOffset(x, y)] = yy
			ci := m.COffset(x, y)
			m.Cb[ci], m.Cr[ci] = cb, cr
		}
	case "gray":
		m := image.NewGray(image.Rect(0, 0, w, h))
		img, set = m, func(x, y int, c color.NRGBA) { m.SetGray(x, y, color.Gray{Y: uint8((int(c.R) + int(c.G)) / 2)}) }
	case "rgba":
		m := image.NewRGBA(image.Rect(0, 0, w, h))
		img, set = m, func(x, y int, c color.NRGBA) { m.SetRGBA(x, y, color.RGBA(c)) }
	default:
		m := image.NewNRGBA(image.Rect(0, 0, w, h))
		img, set = m, m.SetNRGBA
	}
	for y := range h {
		for x := range w {
			set(x, y, color.NRGBA{R: uint8(x * 255 / w), G: uint8(y * 255 / h),
				B: uint8(128 + 60*math.Sin(float64(x)/7)*math.Cos(float64(y)/11)), A: 255})
		}
	}
	return img
}

// catmullRomOnly is Scale without the shrink: the reference it is
// measured against.
func catmullRomOnly(img image.Image, p Preset) *image.NRGBA {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	src, dw, dh := b, p.Width, p.Height
	if p.Mode == ModeCover {
		r := max(float64(p.Width)/float64(w), float64(p.Height)/float64(h))
		cw, ch := min(max(int(float64(p.Width)/r+0.5), 1), w), min(max(int(float64(p.Height)/r+0.5), 1), h)
		src = image.Rect(b.Min.X+(w-cw)/2, b.Min.Y+(h-ch)/2, b.Min.X+(w-cw)/2+cw, b.Min.Y+(h-ch)/2+ch)
	} else {
		r := min(float64(p.Width)/float64(w), float64(p.Height)/float64(h), 1)
		dw, dh = max(int(float64(w)*r+0.5), 1), max(int(float64(h)*r+0.5), 1)
	}
	dst := image.NewNRGBA(image.Rect(0, 0, dw, dh))
	draw.CatmullRom.Scale(dst, dst.Bounds(), img, src, draw.Src, nil)
	return dst
}

// TestScaleShrinksFirstAsCatmullRomWould: for every decoder's image type
// and both modes, Scale's result (averaged down first, then Catmull-Rom)
// is Catmull-Rom's alone within a level or two per channel on average,
// the same size; an image too small to shrink is Catmull-Rom's exactly.
func TestScaleShrinksFirstAsCatmullRomWould(t *testing.T) {
	for _, kind := range []string{"ycbcr", "nrgba", "rgba", "gray"} {
		for _, p := range []Preset{
			{Name: "card", Width: 480, Height: 270, Mode: ModeCover},
			{Name: "large", Width: 600, Height: 600, Mode: ModeFit},
			{Name: "thumb", Width: 128, Height: 128, Mode: ModeCover},
		} {
			t.Run(kind+"/"+p.Name, func(t *testing.T) {
				img := photo(kind, 2400, 1800)
				got, want := Scale(img, p), catmullRomOnly(img, p)
				if got.Bounds() != want.Bounds() {
					t.Fatalf("bounds %v, want %v", got.Bounds(), want.Bounds())
				}
				var sum float64
				for i := range got.Pix {
					sum += math.Abs(float64(got.Pix[i]) - float64(want.Pix[i]))
				}
				if mean := sum / float64(len(got.Pix)); mean > 2 {
					t.Errorf("mean difference %.2f levels per channel, want ≤ 2", mean)
				}
			})
		}
	}
	small := photo("ycbcr", 700, 500)
	p := Preset{Name: "card", Width: 480, Height: 270, Mode: ModeCover}
	if got, want := Scale(small, p), catmullRomOnly(small, p); string(got.Pix) != string(want.Pix) {
		t.Error("an image less than twice the target was not scaled by Catmull-Rom alone")
	}
}

// TestShrinkWeighsColoursByAlpha: a transparent pixel's colour does not
// bleed into the opaque pixels it is averaged with.
func TestShrinkWeighsColoursByAlpha(t *testing.T) {
	m := image.NewNRGBA(image.Rect(0, 0, 2, 2))
	m.SetNRGBA(0, 0, color.NRGBA{R: 255, A: 0}) // transparent red
	m.SetNRGBA(1, 0, color.NRGBA{B: 255, A: 255})
	m.SetNRGBA(0, 1, color.NRGBA{B: 255, A: 255})
	m.SetNRGBA(1, 1, color.NRGBA{B: 255, A: 255})
	got := shrink(m, m.Bounds(), 2).NRGBAAt(0, 0)
	if want := (color.NRGBA{B: 255, A: 191}); got != want {
		t.Errorf("averaged %v, want %v", got, want)
	}
	if shrink(image.NewPaletted(image.Rect(0, 0, 8, 8), nil), image.Rect(0, 0, 8, 8), 2) != nil {
		t.Error("a paletted image was shrunk; Scale takes it whole")
	}
}

// TestScaleKeepsItsIntermediateSmall: a 12-MP photograph's card
// allocates a third of what Catmull-Rom alone does (whose intermediate
// is the target's width by the source's height, 32 bytes a pixel).
func TestScaleKeepsItsIntermediateSmall(t *testing.T) {
	img := photo("ycbcr", 4000, 3000)
	p := Preset{Name: "card", Width: 480, Height: 270, Mode: ModeCover}
	alloc := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	shrunk := alloc(func() { Scale(img, p) })
	whole := alloc(func() { catmullRomOnly(img, p) })
	if shrunk > 12<<20 || shrunk*3 > whole {
		t.Errorf("Scale allocated %d KiB, Catmull-Rom alone %d KiB; want ≤ 12 MiB and a third", shrunk>>10, whole>>10)
	}
}
