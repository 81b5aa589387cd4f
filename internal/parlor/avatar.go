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

// avatarOf makes the form's avatar file public at darkroom without its
// metadata, and returns the public media's id. Decision 0022 keeps an
// original as uploaded (GPS and all), and a public original is readable
// by anyone who knows its id, which every avatar link names. So the file
// is stored private, its thumb variant (re-encoded from pixels, EXIF
// orientation applied, no metadata) is read back with the owner's token
// and stored as the public media, and the private original is deleted:
// nothing the user uploaded is ever public as it came. A refusal is in
// words for the avatar field; err is the platform failing.
func (s *server) avatarOf(r *http.Request, sess *session) (id, refusal string, err error) {
	img, refusal, err := imageOf(r, "avatar", "The avatar")
	if img == nil {
		if refusal == "" && err == nil {
			refusal = "Choose an image to upload."
		}
		return "", refusal, err
	}
	ctx := r.Context()
	original, err := s.api.UploadMedia(ctx, sess.Token, "private", img.name, img.contentType, img.data)
	if err != nil {
		return "", mediaRefusal(err), keepUnavailable(err)
	}
	ct, data, err := s.api.MediaVariant(ctx, sess.Token, original, avatarPreset)
	if err == nil {
		id, err = s.api.UploadMedia(ctx, sess.Token, "public", "avatar", ct, data)
	}
	// The private original goes whatever happened: it is never shown.
	if derr := s.api.DeleteMedia(ctx, sess.Token, original); derr != nil {
		s.log.WarnContext(ctx, "avatar original not deleted", "media_id", original, "err", derr.Error())
	}
	if err != nil {
		return "", mediaRefusal(err), keepUnavailable(err)
	}
	return id, "", nil
}

// mediaRefusal is darkroom's refusal of an avatar in words, "" when err
// is the platform failing.
func mediaRefusal(err error) string {
	switch StatusOf(err) {
	case http.StatusNotFound:
		return "Avatars cannot be uploaded on this platform right now."
	case http.StatusRequestEntityTooLarge:
		return "The avatar is too large, or your uploads have used up their space."
	case http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity:
		return "This file cannot be used as an avatar: " + strings.TrimSuffix(sentence(err), ".") + "."
	}
	return ""
}

// keepUnavailable is err when mediaRefusal has no words for it.
func keepUnavailable(err error) error {
	if mediaRefusal(err) != "" {
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
			if derr := s.api.DeleteMedia(ctx, sess.Token, id); derr != nil {
				s.log.WarnContext(ctx, "unrecorded avatar not deleted", "media_id", id, "err", derr.Error())
			}
		}
		s.fail(w, r, &sess.Me, err)
		return
	}
	if previous != "" && previous != id {
		// A previous avatar already gone (or darkroom down) leaves the
		// new one recorded: the old image is only space, never shown.
		if err := s.api.DeleteMedia(ctx, sess.Token, previous); err != nil && StatusOf(err) != http.StatusNotFound {
			s.log.WarnContext(ctx, "previous avatar not deleted", "media_id", previous, "err", err.Error())
		}
	}
	http.Redirect(w, r, "/app/settings?done="+done, http.StatusSeeOther)
}
