package darkroom

// DecodesHeld is how many decode slots are taken.
func (s *Service) DecodesHeld() int { return len(s.decode) }

// CachedVariants is how many variants the cache keeps, and their bytes.
func (s *Service) CachedVariants() (int, int64) { return s.cache.size() }
