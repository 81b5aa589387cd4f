package parlor

import (
	"context"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// avatarPreset is the darkroom variant an avatar is made from and shown
// as: every page links /v1/media/{id}/thumb of the public avatar.
const avatarPreset = "thumb"

// SetAvatar sets the caller's avatar at identity to the media id, or
// removes it when id is empty, and returns the caller as stored.
func (c *Client) SetAvatar(ctx context.Context, token, id string) (Me, error) {
	var media any
	if id != "" {
		media = id
	}
	var m Me
	err := c.do(ctx, token, "PATCH", "/v1/me", map[string]any{"avatar_media_id": media}, &m)
	return m, err
}

// MediaVariant reads a variant of the caller's media from darkroom (the
// owner's token reads private media) as JPEG or PNG.
func (c *Client) MediaVariant(ctx context.Context, token, id, preset string) (contentType string, data []byte, err error) {
	var out rawBody
	if err := c.do(ctx, token, "GET", "/v1/media/"+url.PathEscape(id)+"/"+url.PathEscape(preset), nil, &out); err != nil {
		return "", nil, err
	}
	ct, _, err := mime.ParseMediaType(out.contentType)
	if err != nil {
		return "", nil, err
	}
	return ct, out.data, nil
}

// DeleteMedia removes the caller's media (original and variants) from
// darkroom.
func (c *Client) DeleteMedia(ctx context.Context, token, id string) error {
	return c.do(ctx, token, "DELETE", "/v1/media/"+url.PathEscape(id), nil, nil)
}

// avatarOf makes the form's avatar file public at darkroom as its thumb
// variant (publicVariant) and returns the public media's id. A refusal
// is in words for the avatar field; err is the platform failing.
func (s *server) avatarOf(r *http.Request, sess *session) (id, refusal string, err error) {
	img, refusal, err := imageOf(r, "avatar", "The avatar")
	if img == nil {
		if refusal == "" && err == nil {
			refusal = "Choose an image to upload."
		}
		return "", refusal, err
	}
	return s.publicVariant(r.Context(), sess, img, avatarPreset, "avatar")
}

// publicVariant makes an uploaded image public at darkroom without its
// metadata (decision 0027), and returns the public media's id. Decision
// 0022 keeps an original as uploaded (GPS and all), and a public
// original is readable by anyone who knows its id, which every link to
// the image names. So the file is stored private, its preset variant
// (re-encoded from pixels, EXIF orientation applied, no metadata) is read
// back with the owner's token and stored as the public media, and the
// private original is deleted: nothing a user uploads is ever public as
// it came. what ("avatar", "logo") names the image in a refusal.
func (s *server) publicVariant(ctx context.Context, sess *session, img *imageFile, preset, what string) (id, refusal string, err error) {
	original, err := s.api.UploadMedia(ctx, sess.Token, "private", img.name, img.contentType, img.data)
	if err != nil {
		return "", mediaRefusal(err, what), keepUnavailable(err)
	}
	ct, data, err := s.api.MediaVariant(ctx, sess.Token, original, preset)
	if err == nil {
		id, err = s.api.UploadMedia(ctx, sess.Token, "public", what, ct, data)
	}
	// The private original goes whatever happened: it is never shown.
	s.forgetMedia(ctx, sess, original, what+" original")
	if err != nil {
		return "", mediaRefusal(err, what), keepUnavailable(err)
	}
	return id, "", nil
}

// forgetMedia deletes the caller's media at darkroom, best effort: media
// already gone is done, and a failure leaves only space taken, so it is
// logged (what names the media) and the page goes on.
func (s *server) forgetMedia(ctx context.Context, sess *session, id, what string) {
	if err := s.api.DeleteMedia(ctx, sess.Token, id); err != nil && StatusOf(err) != http.StatusNotFound {
		s.log.WarnContext(ctx, what+" not deleted", "media_id", id, "err", err.Error())
	}
}

// mediaRefusal is darkroom's refusal of an image in words, naming it as
// what ("avatar", "logo"); "" when err is the platform failing.
func mediaRefusal(err error, what string) string {
	switch StatusOf(err) {
	case http.StatusNotFound:
		return strings.ToUpper(what[:1]) + what[1:] + "s cannot be uploaded on this platform right now."
	case http.StatusRequestEntityTooLarge:
		return "The " + what + " is too large, or your uploads have used up their space."
	case http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity:
		return "This file cannot be used as " + article(what) + " " + what + ": " + strings.TrimSuffix(sentence(err), ".") + "."
	}
	return ""
}

// article is "an" before a vowel, "a" otherwise.
func article(word string) string {
	if strings.ContainsAny(word[:1], "aeiou") {
		return "an"
	}
	return "a"
}

// keepUnavailable is err when darkroom's answer is no refusal in words.
func keepUnavailable(err error) error {
	if mediaRefusal(err, "image") != "" {
		return nil
	}
	return err
}

func (s *server) uploadAvatar(w http.ResponseWriter, r *http.Request, sess *session) {
	id, refusal, err := s.avatarOf(r, sess)
	switch {
	case err != nil:
		s.fail(w, r, &sess.Me, err)
		return
	case refusal != "":
		p := &page{Title: "Settings", User: &sess.Me, Errors: map[string]string{"avatar": refusal}}
		s.renderSettings(w, r, http.StatusUnprocessableEntity, sess, p)
		return
	}
	s.replaceAvatar(w, r, sess, id, "avatar")
}

func (s *server) removeAvatar(w http.ResponseWriter, r *http.Request, sess *session) {
	s.replaceAvatar(w, r, sess, "", "avatar-removed")
}

// replaceAvatar records id (or none) as the user's avatar at identity,
// then deletes the avatar it replaced from darkroom. When identity
// refuses, the new media is deleted instead, so no image is left behind
// unlinked.
func (s *server) replaceAvatar(w http.ResponseWriter, r *http.Request, sess *session, id, done string) {
	ctx := r.Context()
	previous := sess.Me.AvatarMediaID
	if _, err := s.api.SetAvatar(ctx, sess.Token, id); err != nil {
		if id != "" {
			s.forgetMedia(ctx, sess, id, "unrecorded avatar")
		}
		s.fail(w, r, &sess.Me, err)
		return
	}
	if previous != "" && previous != id {
		// A previous avatar already gone (or darkroom down) leaves the
		// new one recorded: the old image is only space, never shown.
		s.forgetMedia(ctx, sess, previous, "previous avatar")
	}
	http.Redirect(w, r, "/app/settings?done="+done, http.StatusSeeOther)
}
