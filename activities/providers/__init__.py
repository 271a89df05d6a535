"""Model providers behind one small interface (:mod:`activities.providers.base`)."""
