package darkroom

import (
	"image"
	"image/color"
)

// shrink averages the rectangle r of img down by k each way (each output
// pixel the mean of a k×k block; a partial block at the right or bottom
// edge is left out), for the decoders' own image types: the YCbCr of a
// JPEG, the NRGBA and RGBA of a PNG or WebP, and Gray. Nil for any other
// type, which Scale then scales whole.
func shrink(img image.Image, r image.Rectangle, k int) *image.NRGBA {
	ow, oh := r.Dx()/k, r.Dy()/k
	if ow < 1 || oh < 1 {
		return nil
	}
	out := image.NewNRGBA(image.Rect(0, 0, ow, oh))
	n := uint32(k * k)
	switch m := img.(type) {
	case *image.YCbCr:
		for oy := range oh {
			for ox := range ow {
				var y, cb, cr uint32
				for sy := r.Min.Y + oy*k; sy < r.Min.Y+(oy+1)*k; sy++ {
					yi := m.YOffset(r.Min.X+ox*k, sy)
					for sx := r.Min.X + ox*k; sx < r.Min.X+(ox+1)*k; sx++ {
						y += uint32(m.Y[yi])
						yi++
						ci := m.COffset(sx, sy)
						cb += uint32(m.Cb[ci])
						cr += uint32(m.Cr[ci])
					}
				}
				rr, gg, bb := color.YCbCrToRGB(uint8((y+n/2)/n), uint8((cb+n/2)/n), uint8((cr+n/2)/n))
				o := out.PixOffset(ox, oy)
				out.Pix[o], out.Pix[o+1], out.Pix[o+2], out.Pix[o+3] = rr, gg, bb, 0xff
			}
		}
	case *image.Gray:
		for oy := range oh {
			for ox := range ow {
				var g uint32
				for sy := r.Min.Y + oy*k; sy < r.Min.Y+(oy+1)*k; sy++ {
					i := m.PixOffset(r.Min.X+ox*k, sy)
					for _, v := range m.Pix[i : i+k] {
						g += uint32(v)
					}
				}
				v := uint8((g + n/2) / n)
				o := out.PixOffset(ox, oy)
				out.Pix[o], out.Pix[o+1], out.Pix[o+2], out.Pix[o+3] = v, v, v, 0xff
			}
		}
	case *image.NRGBA:
		// Colours weighed by their alpha, so a transparent pixel's colour
		// does not bleed into its opaque neighbours.
		averageRGBA(out, m.Pix, m.Stride, m.PixOffset(r.Min.X, r.Min.Y), ow, oh, k, false)
	case *image.RGBA:
		averageRGBA(out, m.Pix, m.Stride, m.PixOffset(r.Min.X, r.Min.Y), ow, oh, k, true)
	default:
		return nil
	}
	return out
}

// averageRGBA fills out from 4-byte pixels at pix (from offset start,
// stride apart), premultiplied or not, each output pixel the
// alpha-weighted mean of a k×k block, written non-premultiplied.
func averageRGBA(out *image.NRGBA, pix []byte, stride, start, ow, oh, k int, premultiplied bool) {
	n := uint64(k * k)
	for oy := range oh {
		for ox := range ow {
			var r, g, b, a uint64
			for dy := range k {
				i := start + (oy*k+dy)*stride + ox*k*4
				for range k {
					pa := uint64(pix[i+3])
					if premultiplied {
						r, g, b = r+uint64(pix[i])*255, g+uint64(pix[i+1])*255, b+uint64(pix[i+2])*255
					} else {
						r, g, b = r+uint64(pix[i])*pa, g+uint64(pix[i+1])*pa, b+uint64(pix[i+2])*pa
					}
					a += pa
					i += 4
				}
			}
			o := out.PixOffset(ox, oy)
			if a == 0 {
				out.Pix[o], out.Pix[o+1], out.Pix[o+2], out.Pix[o+3] = 0, 0, 0, 0
				continue
			}
			out.Pix[o] = uint8((r + a/2) / a)
			out.Pix[o+1] = uint8((g + a/2) / a)
			out.Pix[o+2] = uint8((b + a/2) / a)
			out.Pix[o+3] = uint8((a + n/2) / n)
		}
	}
}
