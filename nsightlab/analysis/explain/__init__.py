"""The prose: every sentence nsightlab writes about a measurement (a sweep's lesson,
lesson1's, a profile's, a decode verdict's, a fleet's notes, colocate's), one module per
subject, made from the numbers the arithmetic modules computed."""
