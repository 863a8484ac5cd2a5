/** The API representations of rows: defined in the store, which also puts them in notification events. */
export { attemptView, jobView, runView } from '../store/views.ts';
