package darkroom

import (
	"bytes"
	"errors"
	"image"
	"image/jpeg"
	"testing"

	"github.com/platformco/platform/internal/darkroom/darkroomtest"
)

func TestSniff(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"png", darkroomtest.PNG(t, 4, 4), TypePNG},
		{"alpha png", darkroomtest.AlphaPNG(t, 4, 4), TypePNG},
		{"jpeg", darkroomtest.JPEG(t, 4, 4), TypeJPEG},
		{"gif", darkroomtest.AnimatedGIF(t, 4, 4), TypeGIF},
		{"webp", darkroomtest.WebP(t, 4, 4), TypeWebP},
		{"pdf", darkroomtest.PDF(), TypePDF},
		{"polyglot", darkroomtest.Polyglot(t), ""},
		{"html", []byte("<html><script>alert(1)</script>"), ""},
		{"png carrying html", append(darkroomtest.PNG(t, 2, 2)[:8], []byte("<script>")...), ""},
		{"empty", nil, ""},
	} {
		if got := Sniff(tc.data); got != tc.want {
			t.Errorf("%s: Sniff = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestOrientation(t *testing.T) {
	for o := 1; o <= 8; o++ {
		if got := orientation(darkroomtest.RotatedJPEG(t, 8, 4, o)); got != o {
			t.Errorf("orientation %d read as %d", o, got)
		}
	}
	if got := orientation(darkroomtest.JPEG(t, 8, 4)); got != 1 {
		t.Errorf("no EXIF: %d", got)
	}
	if got := orientation(darkroomtest.PNG(t, 8, 4)); got != 1 {
		t.Errorf("png: %d", got)
	}
}

// TestPixelLimitBeforeDecoding: the bomb's header is refused without
// decoding (a decode would allocate 40 GB and fail this test).
func TestPixelLimitBeforeDecoding(t *testing.T) {
	if _, err := header(TypePNG, darkroomtest.Bomb(), DefaultMaxPixels); !errors.Is(err, errPixels) {
		t.Fatalf("bomb: %v", err)
	}
	if _, err := header(TypePNG, darkroomtest.PNG(t, 10, 10), 99); !errors.Is(err, errPixels) {
		t.Fatalf("100 px over a 99 px limit: %v", err)
	}
	if cfg, err := header(TypePNG, darkroomtest.PNG(t, 10, 10), 100); err != nil || cfg.Width != 10 {
		t.Fatalf("at the limit: %v", err)
	}
}

// TestRenderAppliesOrientationAndDropsMetadata: a JPEG shot sideways
// (orientation 6) comes out upright, sized by the preset, with no EXIF.
func TestRenderAppliesOrientationAndDropsMetadata(t *testing.T) {
	s := NewService(Options{})
	data := darkroomtest.RotatedJPEG(t, 80, 40, 6)
	for _, tc := range []struct {
		preset Preset
		format string
		w, h   int
	}{
		{Preset{Name: "fit", Width: 100, Height: 100, Mode: ModeFit}, "jpeg", 40, 80},
		{Preset{Name: "cover", Width: 30, Height: 30, Mode: ModeCover}, "png", 30, 30},
		{Preset{Name: "big", Width: 1000, Height: 1000, Mode: ModeFit}, "webp", 40, 80},
	} {
		out, w, h, err := s.render(data, TypeJPEG, tc.preset, tc.format)
		if err != nil {
			t.Fatal(err)
		}
		if w != tc.w || h != tc.h {
			t.Errorf("%s: %dx%d, want %dx%d", tc.preset.Name, w, h, tc.w, tc.h)
		}
		if bytes.Contains(out, []byte("Exif")) {
			t.Errorf("%s: the variant carries EXIF", tc.preset.Name)
		}
		if tc.format == "jpeg" {
			img, err := jpeg.Decode(bytes.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			// Rotated clockwise: the red left half is now the top.
			if r, _, b, _ := img.At(20, 5).RGBA(); r < b {
				t.Errorf("top is not red: the orientation was not applied")
			}
			if img.Bounds() != image.Rect(0, 0, 40, 80) {
				t.Errorf("bounds %v", img.Bounds())
			}
		}
	}
}

func TestParsePresets(t *testing.T) {
	ps, err := ParsePresets(DefaultVariants)
	if err != nil || len(ps) != 3 || ps["card"] != (Preset{Name: "card", Width: 480, Height: 270, Mode: ModeCover}) {
		t.Fatalf("default: %v %v", ps, err)
	}
	for _, bad := range []string{"", "thumb", "thumb=1x1", "thumb=0x1:fit", "Thumb=1x1:fit", "a=1x1:fit,a=2x2:fit", "a=1x1:stretch", "a=9999x1:fit"} {
		if _, err := ParsePresets(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
